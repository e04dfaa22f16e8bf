# Writes the NumPy fixtures of data/numpy_test.go with NumPy itself
# (/usr/bin/python3 make.py; committed, so tests need no Python).
import numpy as np

x = np.array([[0.5, 1, 2], [1.5, -1, 0], [2.5, 3, 1], [0, 0, 0], [4, 4, 4], [-1, 2, 7]], dtype=np.float32)
np.save("features.npy", x)
np.save("labels.npy", np.array(["cat", "dog", "cat", "emu", "dog", "cat"]))
np.save("labels_int.npy", np.array([2, 0, 2, 1, 0, 2], dtype=np.int64))
np.save("table.npy", np.hstack([x.astype(np.float64), np.array([[2], [0], [2], [1], [0], [2]])]))
np.save("fortran.npy", np.asfortranarray(x.astype(np.float64)))
img = np.arange(4 * 2 * 3 * 3, dtype=np.uint8).reshape(4, 2, 3, 3)  # n, H, W, C
np.save("images_hwc.npy", img)
np.save("images_chw.npy", np.ascontiguousarray(img.transpose(0, 3, 1, 2)))
np.save("labels4.npy", np.array([True, False, True, True]))
np.savez("set.npz", x=x, y=np.array([2, 0, 2, 1, 0, 2], dtype=np.int16))
np.savez_compressed("named.npz", feats=x.astype(np.float64), lab=np.array(["a", "b", "a", "b", "b", "a"]))
np.save("complex.npy", np.array([1j, 2, 3]))
np.save("object.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
np.save("nan.npy", np.array([[1.0, np.nan], [2, 3]]))
np.save("empty.npy", np.zeros((0, 3)))
