"""Detection off the request path: the job queue in the database and the worker loop that
runs model_server over queued documents."""
