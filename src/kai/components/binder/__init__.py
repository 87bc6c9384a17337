"""The binder: binds the pods the scheduler's BindRequests name, with GPU reservation pods for shared GPUs."""
