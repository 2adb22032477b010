"""``gitnetdiag storage``: is the disk under the git data slow?

    job.py        fio job for the reference workload, size/duration parsing   (pure)
    fio.py        fio JSON output -> FioResult                                 (pure)
    model.py      result dataclasses (fio, small files, pack read, the check)  (pure)
    reference.py  reference points and the verdict                            (pure)
    adapter.py    result -> the diagnosis engine's StorageResult               (pure)
    smallfiles.py 1,000-file write + read test                                 (I/O)
    packread.py   timed read of a repository's pack files                      (I/O)
    runner.py     checks the path, runs everything, always cleans up           (I/O)

The renderers live in :mod:`gitnetdiag.report.storage`.
"""
