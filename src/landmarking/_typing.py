"""Type aliases used in the public signatures (PEP 484 / 604).

Imported at run time (not under ``TYPE_CHECKING``) so that
``typing.get_type_hints`` resolves every public signature; they cost nothing
that the modules using them do not already import.
"""

from os import PathLike
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray
from scipy import sparse

__all__ = ["ArrayLike", "DTypeLike", "NDArray", "MatrixLike", "SparseMatrix",
           "RandomStateLike", "PathLike", "StrPath", "DeviceLike"]

#: A scipy sparse matrix or array (CSR is what the estimators take).
SparseMatrix: TypeAlias = sparse.spmatrix | sparse.sparray
#: Rows of data: anything NumPy can read as an array (a list, an ndarray, a memory
#: map; Zarr and Dask arrays through their ``__array__``) or a scipy sparse matrix.
MatrixLike: TypeAlias = ArrayLike | SparseMatrix
#: ``random_state`` as scikit-learn takes it: a seed, a RandomState or None.
RandomStateLike: TypeAlias = int | np.random.RandomState | None
#: A file name.
StrPath: TypeAlias = str | PathLike[str]
#: ``device`` as the estimators take it: "cpu", "cuda", "cuda:N", "auto" or a
#: ``torch.device`` (torch is optional, so its type is not named here).
DeviceLike: TypeAlias = str | Any
