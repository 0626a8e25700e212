"""Fetching from the web: the SSRF guard and HTML conversion."""
