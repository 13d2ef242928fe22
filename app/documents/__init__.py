"""Documents and studies: taxonomies, segmenting, checks of untrusted text, storing imports."""
