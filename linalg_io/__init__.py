"""linalg-io: communication-optimal distributed linear algebra, measured against its models."""

__version__ = "0.1.0"
