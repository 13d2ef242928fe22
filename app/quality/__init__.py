"""Quality: agreement, reliability, adjudication and the study report (the span and
counted-work rules they read are in app/rules/)."""
