"""Annotating: the rules for one assignment (open, add, remove, position, submit) and which
document an arriving worker gets (assigning)."""
