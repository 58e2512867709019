"""Telling operators on their devices (issue 31): the VAPID keys the servers sign pushes with
(``keys``), the browsers that asked to be told (``subscriptions``), and what is told, to whom,
and when (``telling``). Sending is the server's (``api.notify.notifier``); what is kept is here."""
