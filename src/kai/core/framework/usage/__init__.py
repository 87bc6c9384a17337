"""Time-based fair share: the usage database's config, the store of allocation samples and the usage window."""
