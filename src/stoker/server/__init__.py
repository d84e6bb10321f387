"""Serving HTTP: Stoker's own front, granian's embedding (:mod:`~stoker.server.listeners`),
the reaper of silent connections and the collector policy of a serving process."""
