"""The modal dialogs: confirm, terminate, resume and launch, reply, and a permission request."""
