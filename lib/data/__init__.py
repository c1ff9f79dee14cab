"""Data: the synthetic ring of notebook 01, and (lib.data.files) the data root and checked files."""

from lib.data.files import FILES, DataFile, DataFileError, data_file, data_root
from lib.data.ring import RingParams, RingSettings, gaussian_ring, ring_draw, ring_train_heldout

__all__ = ["FILES", "DataFile", "DataFileError", "data_file", "data_root",
           "RingParams", "RingSettings", "gaussian_ring", "ring_draw", "ring_train_heldout"]
