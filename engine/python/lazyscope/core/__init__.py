"""Device helpers in the spirit of ``torch_xla.core``."""
