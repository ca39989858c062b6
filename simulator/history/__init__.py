"""The history: the SQLite files the simulator replays, and how they are filled.

* :mod:`.schema`: what a history file holds (tables, indexes, version, meta
  keys); :mod:`.store`: every read and write of it (the only SQL);
  :mod:`.labels`: the ground truth a generated history carries;
* :mod:`.rest_client`: what is asked of a Buildbot master's REST API, over
  :mod:`.rest_transport`'s HTTP (bounded concurrency, timeouts, retries,
  one-line errors); :mod:`.entities`: its JSON read into typed records;
* :mod:`.importer`: a pull of a master into a history, page by page
  (:mod:`.page_read`: a page read ahead, its evidence in flight);
  :mod:`.pull_file`: the file it goes into, made and, after a failed pull,
  removed;
  :mod:`.change_index`: the changes a pull knows, for deriving blamelists;
* :mod:`.paths`: where the files live, per user.
"""
