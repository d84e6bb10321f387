"""Persisted deadlines on one timer: pure arming and due decisions, a store port, the ticker."""
