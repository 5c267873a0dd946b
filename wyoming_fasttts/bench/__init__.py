"""``wyoming-fasttts bench``: our server against the plain baseline server (``baseline_server``), both started here."""
