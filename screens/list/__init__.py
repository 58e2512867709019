"""The session list: its screen, the grid that draws it, the model of which rows are held, the
reads in workers, marks, filters, groups and keys."""
