"""A running lab's state as the lab writes it and every user reads it."""
