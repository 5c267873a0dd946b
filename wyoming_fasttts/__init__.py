"""wyoming-fasttts: Mandarin text-to-speech for Wyoming clients from a resident TensorRT or ONNX Runtime engine."""

__version__ = "0.1.0"
PROJECT_URL = "https://github.com/wyoming-fasttts/wyoming-fasttts"  # also [project.urls] in pyproject.toml
