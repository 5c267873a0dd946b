"""A media player for the Home Assistant peer test: it hands each URL it is asked to play to the driver."""
