"""The example's components (``dg list defs``): each folder holds a ``defs.yaml``."""
