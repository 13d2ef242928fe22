"""Quality: span matching, assignment scores, agreement and the study report."""
