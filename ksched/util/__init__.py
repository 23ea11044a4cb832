"""Small async and time helpers that know nothing of scheduling."""
