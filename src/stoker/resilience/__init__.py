"""What Stoker does when something it relies on stops answering: the origin's circuit
breaker (:mod:`~stoker.resilience.breaker`) and a store's outage, when to say so and when
to try again (:mod:`~stoker.resilience.outage`).  Both pure state machines."""
