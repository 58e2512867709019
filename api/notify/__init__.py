"""Telling people where they are: Web Push to devices and webhooks, and the process pushes leave
from."""
