"""First-start graph conversion: the shipped model into the stage graphs the engines run, cached on disk."""
