"""What every request passes through before a route: the connection's limits, the names a server
answers to, who the caller is, and the guard around the app."""
