"""The pure pipeline: run directory or capture -> observations -> diagnosis -> reports."""
