"""Settings of the test Django site: what ``django-admin startproject`` gives, minus the admin.

The SQLite database lives in the directory named by ``DJANGO_SITE_DATA_DIR``
(the test's temporary directory).  Pages send no ``Cache-Control`` (like plain
Django and Wagtail pages); the session and auth middleware add
``Vary: Cookie`` to every page that looks at ``request.user``.
"""

import os
from pathlib import Path

try:
    DATA_DIR = Path(os.environ["DJANGO_SITE_DATA_DIR"])
except KeyError:
    raise RuntimeError(
        "DJANGO_SITE_DATA_DIR is not set: name the directory for the test site's database"
    ) from None

SECRET_KEY = "stoker-test-site-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "tests.integration.django_site.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).parent / "templates"],
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DATA_DIR / "site.sqlite3"},
}
# The fast hasher Django's own docs recommend for tests: logins stay quick.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SESSION_COOKIE_NAME = "sessionid"
CSRF_COOKIE_NAME = "csrftoken"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/account/"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
