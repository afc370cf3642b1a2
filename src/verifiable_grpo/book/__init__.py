"""Book helpers: notebook tables, widgets and plots."""
