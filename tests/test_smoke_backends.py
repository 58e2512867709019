from roundtable_console.store.db.database import Store
from roundtable_console.store.reads import sessions
from tests.helpers import register_session


def test_register_and_read_back_on_each_backend(store: Store, clock) -> None:
    with store.write() as db:
        register_session(db, "s1", agent_id="a1", run_id="r1", clock=clock)
    with store.read() as db:
        assert sessions.get_session(db=db, session_id="s1").agent_id == "a1"
