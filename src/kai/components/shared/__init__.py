"""What every component shares: events, metrics, the HTTP endpoints, parallel writes and the kinds each watches."""
