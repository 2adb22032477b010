"""Pure analysis: packet tables and parsed records in, measured values out."""
