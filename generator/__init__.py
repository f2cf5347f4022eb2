"""AICR Recipe Catalog: the pipeline load → validate → resolve → render → verify → aggregate → site → release."""

__version__ = "0.1.0"
