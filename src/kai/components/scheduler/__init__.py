"""The scheduler component: cycles over the cluster state and writes its decisions back."""
