"""The always-on tap: a sans-I/O controller run by a driver (tcpdump, decode, totals), its metrics and live view."""
