"""Original demo documents (SNaC format) with planted coherence errors."""
