#!/usr/bin/env python3
"""A stand-in for an agent program, for the resume-and-launch tests: it writes its argv,
working directory and $ROUNDTABLE_SESSION_ID as JSON to the file named by $FAKE_AGENT_RECORD,
says so on stdout, and exits with the status in $FAKE_AGENT_EXIT (0 by default), after
$FAKE_AGENT_SLEEP seconds if set (so a walk through the console can see it run). Standard
library only: tests run it as a program (``execvp``, tmux, ``subprocess``), configured as an
adapter's resume_pattern."""

import json
import os
import sys
import time


def main() -> int:
    record = os.environ.get("FAKE_AGENT_RECORD")
    if record:
        with open(record, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "argv": sys.argv,
                    "cwd": os.getcwd(),
                    "session": os.environ.get("ROUNDTABLE_SESSION_ID"),
                },
                handle,
            )
    print(f"fake agent: {len(sys.argv) - 1} arguments in {os.getcwd()}", flush=True)
    time.sleep(float(os.environ.get("FAKE_AGENT_SLEEP", "0")))
    return int(os.environ.get("FAKE_AGENT_EXIT", "0"))


if __name__ == "__main__":
    sys.exit(main())
