"""Crowd platforms: Prolific, MTurk (ExternalQuestion) and generic arrival and return; the
MTurk client."""
