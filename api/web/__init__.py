"""The web console of ``roundtable serve`` (issue 21): server-rendered pages over the same store
and rules as the API, a small script of our own for actions and live updates, no build step."""
