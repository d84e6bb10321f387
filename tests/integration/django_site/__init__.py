"""A tiny Django site used as a real origin: anonymous pages, a form, a login, an account page."""
