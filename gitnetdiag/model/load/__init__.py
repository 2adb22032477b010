"""The records of a load run."""
