"""Live: the workspace WebSocket and the event stream, the hub that wakes them when the store
changes, and the slots that bound how many are open."""
