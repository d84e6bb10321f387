"""Platform presets: the bypass paths, cookie lists and lifetimes a platform needs.

``preset = "wordpress"`` in ``stoker.toml`` (or in one ``[[rule]]``) stands for
``[[rule]]`` tables; :func:`expand` writes them out, so a preset means exactly what
``stoker settings --preset NAME`` prints.  Pure: TOML-shaped tables in, tables out.

Invariants:

- the expansion is, in order: the preset's query bypass rule (``query_has``: any path,
  first, so no rule of the user's reopens it), its path bypass rules, the user's rules,
  the preset's catch-all rule (its lifetimes and lists);
- the user's own rules win, and cannot open a bypassed path by accident: a preset
  bypass rule comes after the user's rules whose path lies inside it (``/wp-admin/x``
  inside ``/wp-admin``) but before the first user rule that may match more than that
  (no path, a shorter prefix, a glob); it is dropped when such an inside rule for
  every host and every query has exactly its path; the catch-all is dropped when the
  user has one (a rule with no host, path or ``query_has``);
- every cookie a preset's platform uses to tell one visitor from another (a login, a
  commenter, a cart, a chosen language) is in its ``bypass_cookies``: those are the
  platform's personal cookies (:mod:`stoker.config.platform_cookies`);
- every user rule that is not ``bypass`` gets the preset's lists merged in (the
  user's entries first) and its ``ttl``/``swr``/``sie`` where the rule sets none; a
  pattern the user lists under any cookie key is left where the user put it;
- a rule with its own ``preset`` gets that preset's lists instead, and no paths;
- user tables that are not tables, or hold values of the wrong type, come out as
  they went in, for the rule parser to reject with the user's numbering.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

LIST_KEYS = ("ignore_query", "bypass_cookies", "strip_cookies", "ignore_cookies",
             "vary_ignore_cookies")
COOKIE_KEYS = LIST_KEYS[1:]
LIFETIME_KEYS = ("ttl", "swr", "sie")


@dataclass(frozen=True, slots=True)
class Preset:
    """What one platform needs; see the module invariants for how it applies."""

    title: str
    """The platform's name, as its users write it."""
    bypass_paths: tuple[str, ...]
    bypass_query: tuple[str, ...]
    """Query parameter names whose presence makes any page personal (``query_has``)."""
    ignore_query: tuple[str, ...]
    bypass_cookies: tuple[str, ...]
    strip_cookies: tuple[str, ...]
    ignore_cookies: tuple[str, ...]
    vary_ignore_cookies: tuple[str, ...]
    ttl: str
    swr: str
    sie: str

    def lists(self) -> dict[str, tuple[str, ...]]:
        """The list keys, by ``[[rule]]`` key name."""
        return {key: getattr(self, key) for key in LIST_KEYS}

    def lifetimes(self) -> dict[str, str]:
        """``ttl``, ``swr`` and ``sie``, as durations."""
        return {key: getattr(self, key) for key in LIFETIME_KEYS}


# Tracking parameters that never change a page: Google Analytics campaign parameters
# (utm_*, https://support.google.com/analytics/answer/10917952), the click IDs of Google
# Ads auto-tagging (gclid), Meta (fbclid) and Microsoft Advertising (msclkid).
TRACKING_QUERY = ("utm_*", "gclid", "fbclid", "msclkid")

# Analytics cookies that only scripts read: they never reach the origin.
# Google Analytics (https://developers.google.com/analytics/devguides/collection/
# analyticsjs/cookie-usage): _ga, _ga_<id>, _gid, _gat*, _gac_*, __utm*; Google Ads
# conversion linker (_gcl_*); Meta pixel (_fbp, _fbc, https://developers.facebook.com/
# docs/marketing-api/conversions-api/parameters/fbp-and-fbc/); Hotjar (_hj*, "Cookies set
# by the Hotjar tracking code"); Microsoft Clarity (_clck, _clsk, "Clarity cookies");
# Matomo (_pk_*, https://matomo.org/faq/general/faq_146/); TikTok pixel (_ttp).
ANALYTICS_COOKIES = ("_ga*", "_gid", "_gcl_*", "__utm*", "_fbp", "_fbc", "_hj*", "_clck",
                     "_clsk", "_pk_*", "_ttp")

# Consent cookies: they reach the origin (a consent tool may read them) but the
# consent tools below are built to work behind page caches, which serve every visitor
# the same page and let the banner script read the choice.  cookie_consent and
# cookieconsent_status (Osano's open-source cookieconsent), CookieConsent (Cookiebot),
# cookieyes-consent (CookieYes), cookielawinfo-checkbox-* and viewed_cookie_policy
# (CookieLawInfo / GDPR Cookie Consent), cmplz_* (Complianz), borlabs-cookie (Borlabs
# Cookie), OptanonConsent and OptanonAlertBoxClosed (OneTrust), each as its vendor's
# cookie declaration names it; cookie_notice_accepted (Cookie Notice), moove_gdpr_popup
# (GDPR Cookie Compliance), euconsent-v2 (IAB TCF v2 consent string,
# https://github.com/InteractiveAdvertisingBureau/GDPR-Transparency-and-Consent-Framework).
CONSENT_COOKIES = ("cookie_consent", "cookieconsent_status", "CookieConsent",
                   "cookieyes-consent", "cookielawinfo-checkbox-*", "viewed_cookie_policy",
                   "cmplz_*", "borlabs-cookie", "OptanonConsent", "OptanonAlertBoxClosed",
                   "cookie_notice_accepted", "moove_gdpr_popup", "euconsent-v2")

# Session cookies of the common stacks' defaults: PHPSESSID (PHP session.name,
# https://www.php.net/manual/en/session.configuration.php), sessionid (Django),
# *_session (Rails' _<app>_session and Laravel's <app>_session), SESS*/SSESS* (Drupal,
# http and https), JSESSIONID (Jakarta Servlet), ASP.NET_SessionId (ASP.NET),
# connect.sid (express-session, https://github.com/expressjs/session#name).
SESSION_COOKIES = ("PHPSESSID", "sessionid", "*_session", "SESS*", "SSESS*", "JSESSIONID",
                   "ASP.NET_SessionId", "connect.sid")

CMS_LIFETIMES = {"ttl": "10m", "swr": "1m", "sie": "1d"}
APP_LIFETIMES = {"ttl": "5m", "swr": "1m", "sie": "1d"}


def _preset(title: str, lifetimes: dict[str, str], *, bypass_paths: Sequence[str] = (),
            bypass_query: Sequence[str] = (), bypass_cookies: Sequence[str] = (),
            ignore_cookies: Sequence[str] = (),
            vary_ignore_cookies: Sequence[str] = ()) -> Preset:
    """A preset: the platform's lists after the ones every preset shares."""
    return Preset(title=title, bypass_paths=tuple(bypass_paths),
                  bypass_query=tuple(bypass_query), ignore_query=TRACKING_QUERY,
                  bypass_cookies=(*bypass_cookies, *SESSION_COOKIES),
                  strip_cookies=ANALYTICS_COOKIES,
                  ignore_cookies=(*ignore_cookies, *CONSENT_COOKIES),
                  vary_ignore_cookies=tuple(vary_ignore_cookies), **lifetimes)


# WordPress (https://developer.wordpress.org/advanced-administration/wordpress/cookies/):
# wordpress_logged_in_<hash> marks a logged-in user everywhere (wordpress_sec_<hash> and
# wordpress_<hash> are sent only to /wp-admin and plugins); wp-postpass_<hash> unlocks a
# password-protected post; comment_author_<hash>, comment_author_email_<hash>,
# comment_author_url_<hash> pre-fill a commenter's form and show their held comments.
# wordpress_test_cookie, wp-settings-[time-]<uid> and wp_lang stay after logout and do not
# change a page (WordPress reads wp-settings-<uid> only for a logged-in user:
# get_all_user_settings() returns nothing without get_current_user_id(), and a logged-in
# request bypasses by its cookie).  A commenter whose comment awaits moderation is sent
# to ?unapproved=<id>&moderation-hash=<hash> (wp_get_unapproved_comment_author_email()),
# which shows them their held comment under their name: those parameters bypass on any
# path.  Previews (?preview=true, with preview_id/preview_nonce for autosaves) of drafts
# need the logged-in cookie in core, but plugins show drafts to anonymous visitors with a
# link (Public Post Preview's ?_ppp=…&preview=true): preview bypasses too, so no draft
# outlives its link in the cache.  ?replytocom=<id> is the same page for every visitor
# (the form set to reply to one comment), so it stays cacheable.  /wp-json/ is not
# bypassed by path: a REST request with auth carries the logged-in cookie (cookie auth,
# bypassed) or Authorization (application passwords, shared only when the response says
# public, RFC 9111 §3.5), and anonymous REST GETs are public content worth caching.
WP_BYPASS_PATHS = ("/wp-admin", "/wp-login.php", "/wp-cron.php", "/xmlrpc.php",
                   "/wp-signup.php", "/wp-activate.php")
WP_BYPASS_QUERY = ("unapproved", "moderation-hash", "preview")
WP_BYPASS_COOKIES = ("wordpress_logged_in_*", "wordpress_sec_*", "wp-postpass_*",
                     "comment_author_*")  # also comment_author_email_*, comment_author_url_*
WP_IGNORE_COOKIES = ("wordpress_test_cookie", "wp-settings-*", "wp_lang")

# WooCommerce (https://woocommerce.com/document/woocommerce-cookies/): woocommerce_cart_hash,
# woocommerce_items_in_cart, woocommerce_recently_viewed and wp_woocommerce_session_<hash>
# belong to one shopper; store_notice<id> only hides the store notice in the browser.
# Cart, Checkout and My account are the pages WooCommerce creates at install
# (https://woocommerce.com/document/woocommerce-pages/); the Store API (/wp-json/wc/store/)
# keeps a cart by session cookie or Cart-Token header.  ?wc-ajax= and ?add-to-cart= are
# on any path: WooCommerce answers them with no-cache headers or Set-Cookie, which are
# never stored.
WOO_BYPASS_PATHS = ("/cart", "/checkout", "/my-account", "/wp-json/wc/store/")
WOO_BYPASS_COOKIES = ("woocommerce_*", "wp_woocommerce_session_*")
WOO_IGNORE_COOKIES = ("store_notice*",)

# Django (https://docs.djangoproject.com/en/stable/ref/settings/): SESSION_COOKIE_NAME is
# sessionid (in SESSION_COOKIES), CSRF_COOKIE_NAME csrftoken, LOGIN_URL /accounts/login/;
# the admin is mounted at /admin/ (https://docs.djangoproject.com/en/stable/intro/
# tutorial01/).  csrftoken reaches Django (forms need it) but never changes a page: every
# response that renders a token also sets the cookie, and is never stored.  Two cookies
# change a page for one visitor and bypass: django_language (LANGUAGE_COOKIE_NAME, the
# visitor's chosen language; LocaleMiddleware adds only Vary: Accept-Language, so a copy
# in that language would be shared with every visitor of the same Accept-Language, and
# Stoker has no way to vary on one cookie) and messages (django.contrib.messages'
# CookieStorage: flash messages, which may name the visitor).
DJANGO_BYPASS_PATHS = ("/admin/", "/accounts/")
DJANGO_BYPASS_COOKIES = ("django_language", "messages")
DJANGO_VARY_IGNORE = ("csrftoken",)

# Wagtail (https://docs.wagtail.org/en/stable/getting_started/integrating_into_django.html):
# its admin at /admin/ and Django's moved to /django-admin/; wagtail/urls.py serves the
# login and password forms of private pages at /_util/login/ and
# /_util/authenticate_with_password/.  Private-page passwords live in the Django session
# (sessionid).
WAGTAIL_BYPASS_PATHS = ("/admin/", "/django-admin/", "/_util/")

# Drupal: the session cookie is SESS<hash>, SSESS<hash> over https (in SESSION_COOKIES;
# core/lib/Drupal/Core/Session/SessionConfiguration.php); user_cookie_save() keeps
# per-visitor state in Drupal.visitor.<name> cookies (core fills an anonymous commenter's
# name, mail and homepage from them; modules may read them on the server), and has_js
# (Drupal 7) only says scripts run.  /admin and /user/ (login, register, password, profile)
# are core routes; /cron/<key> runs cron; /update.php and /batch run updates.
DRUPAL_BYPASS_PATHS = ("/admin", "/user/", "/cron/", "/update.php", "/batch")
DRUPAL_BYPASS_COOKIES = ("Drupal.visitor.*",)
DRUPAL_IGNORE_COOKIES = ("has_js",)

# Rails: the session cookie is _<app>_session (in SESSION_COOKIES; https://guides.rubyonrails.org/
# security.html#sessions); Devise keeps remember_<scope>_token and mounts /users/sign_in,
# /users/sign_up, /users/password, /users/edit (https://github.com/heartcombo/devise);
# ActiveAdmin, RailsAdmin and Administrate mount at /admin.  A page that renders
# csrf_meta_tags writes the CSRF token into the session, so every visitor who got one has
# the session cookie: only pages that leave the session alone are cached.
RAILS_BYPASS_PATHS = ("/admin", "/users/sign_in", "/users/sign_up", "/users/password",
                      "/users/edit")
RAILS_BYPASS_COOKIES = ("remember_*_token",)

# Laravel (https://laravel.com/docs/session, https://laravel.com/docs/csrf): the session
# cookie is <app>_session, laravel_session by default (in SESSION_COOKIES); "remember me"
# is remember_web_<sha1>; XSRF-TOKEN is re-sent with every response for scripts to echo in
# X-XSRF-TOKEN and never changes a page.  Breeze/Fortify mount /login, /register, /logout,
# /forgot-password, /reset-password, /email/verify; Filament /admin, Nova /nova, Horizon
# /horizon, Telescope /telescope, Sanctum /sanctum/csrf-cookie.
LARAVEL_BYPASS_PATHS = ("/login", "/register", "/logout", "/forgot-password",
                        "/reset-password", "/email/verify", "/admin", "/nova", "/horizon",
                        "/telescope", "/sanctum/")
LARAVEL_BYPASS_COOKIES = ("remember_web_*",)
LARAVEL_VARY_IGNORE = ("XSRF-TOKEN",)

PRESETS: dict[str, Preset] = {
    "wordpress": _preset("WordPress", CMS_LIFETIMES, bypass_paths=WP_BYPASS_PATHS,
                         bypass_query=WP_BYPASS_QUERY, bypass_cookies=WP_BYPASS_COOKIES,
                         ignore_cookies=WP_IGNORE_COOKIES),
    "woocommerce": _preset("WooCommerce", CMS_LIFETIMES,
                           bypass_paths=(*WP_BYPASS_PATHS, *WOO_BYPASS_PATHS),
                           bypass_query=WP_BYPASS_QUERY,
                           bypass_cookies=(*WP_BYPASS_COOKIES, *WOO_BYPASS_COOKIES),
                           ignore_cookies=(*WP_IGNORE_COOKIES, *WOO_IGNORE_COOKIES)),
    "django": _preset("Django", APP_LIFETIMES, bypass_paths=DJANGO_BYPASS_PATHS,
                      bypass_cookies=DJANGO_BYPASS_COOKIES,
                      vary_ignore_cookies=DJANGO_VARY_IGNORE),
    "wagtail": _preset("Wagtail", CMS_LIFETIMES, bypass_paths=WAGTAIL_BYPASS_PATHS,
                       bypass_cookies=DJANGO_BYPASS_COOKIES,
                       vary_ignore_cookies=DJANGO_VARY_IGNORE),
    "drupal": _preset("Drupal", CMS_LIFETIMES, bypass_paths=DRUPAL_BYPASS_PATHS,
                      bypass_cookies=DRUPAL_BYPASS_COOKIES, ignore_cookies=DRUPAL_IGNORE_COOKIES),
    "rails": _preset("Rails", APP_LIFETIMES, bypass_paths=RAILS_BYPASS_PATHS,
                     bypass_cookies=RAILS_BYPASS_COOKIES),
    "laravel": _preset("Laravel", APP_LIFETIMES, bypass_paths=LARAVEL_BYPASS_PATHS,
                       bypass_cookies=LARAVEL_BYPASS_COOKIES,
                       vary_ignore_cookies=LARAVEL_VARY_IGNORE),
    "generic": _preset("generic", APP_LIFETIMES),
}
NAMES = tuple(PRESETS)


def get_preset(name: str) -> Preset:
    """The preset called ``name``; ``ValueError`` naming the known ones otherwise."""
    found = PRESETS.get(name)
    if found is None:
        raise ValueError(f"unknown preset {name!r} (known: {', '.join(NAMES)})")
    return found


def _union(own: list[Any], extra: Sequence[str], claimed: set[Any]) -> list[Any]:
    return [*own, *(item for item in extra if item not in own and item not in claimed)]


def merge(table: dict[str, Any], preset: Preset) -> dict[str, Any]:
    """``table`` with the preset's lists and lifetimes merged in (no ``preset`` key)."""
    merged = {key: value for key, value in table.items() if key != "preset"}
    for key, value in preset.lifetimes().items():
        merged.setdefault(key, value)
    claimed = {item for key in COOKIE_KEYS if isinstance(table.get(key), list)
               for item in table[key] if isinstance(item, str)}
    for key, extra in preset.lists().items():
        own = table.get(key, [])
        if isinstance(own, list) and (own or extra):
            merged[key] = _union(own, extra, claimed if key in COOKIE_KEYS else set())
    return merged


_GLOB_CHARS = frozenset("*?[")  # as in stoker.config.rules: a path with one of these is a glob


def _path(table: Any) -> str | None:
    path = table.get("path") if isinstance(table, dict) else None
    return path if isinstance(path, str) else None


def _inside(table: Any, bypass_path: str) -> bool:
    return (_path(table) or "").startswith(bypass_path)


def _covers(table: Any, bypass_path: str) -> bool:
    """True when a user rule may match a path inside ``bypass_path`` (a glob may)."""
    if not isinstance(table, dict) or _inside(table, bypass_path):
        return False
    path = _path(table)
    if path is None:
        return "path" not in table
    return not _GLOB_CHARS.isdisjoint(path) or bypass_path.startswith(path)


def _place(tables: list[Any], bypass_path: str) -> int | None:
    """Where the preset's bypass rule for ``bypass_path`` goes (``None``: dropped).

    After the user's rules inside it, before the first user rule that covers it.
    """
    inside: list[int] = []
    for index, table in enumerate(tables):
        if _covers(table, bypass_path):
            break
        if _inside(table, bypass_path):
            inside.append(index)
    if any(_path(tables[index]) == bypass_path and "host" not in tables[index]
           and "query_has" not in tables[index] for index in inside):
        return None
    return inside[-1] + 1 if inside else 0


def _is_catch_all(table: Any) -> bool:
    return isinstance(table, dict) and not {"host", "path", "query_has"} & table.keys()


def _merged_user_rule(table: Any, preset: Preset) -> Any:
    if not isinstance(table, dict) or table.get("bypass") is True or "preset" in table:
        return table
    return merge(table, preset)


def expand(tables: Sequence[Any], name: str) -> list[Any]:
    """The ``[[rule]]`` tables that ``preset = name`` turns ``tables`` into."""
    preset = get_preset(name)
    user = [_merged_user_rule(table, preset) for table in tables]
    slots: dict[int, list[dict[str, Any]]] = {}
    for path in preset.bypass_paths:
        where = _place(user, path)
        if where is not None:
            slots.setdefault(where, []).append({"path": path, "bypass": True})
    query = [{"query_has": list(preset.bypass_query), "bypass": True}] if (
        preset.bypass_query) else []
    expanded: list[Any] = [*query, *slots.get(0, [])]
    for number, table in enumerate(user, start=1):
        expanded += [table, *slots.get(number, [])]
    if not any(_is_catch_all(table) for table in tables):
        expanded.append(merge({}, preset))
    return expanded


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        items = [_toml_value(item) for item in value]
        one_line = "[" + ", ".join(items) + "]"
        return one_line if len(one_line) <= 72 else "[\n" + "".join(
            f"    {item},\n" for item in items) + "]"
    return json.dumps(value)


def to_toml(tables: Sequence[dict[str, Any]]) -> str:
    """``tables`` as ``[[rule]]`` TOML, ready to paste into ``stoker.toml``."""
    blocks = ["[[rule]]\n" + "".join(f"{key} = {_toml_value(value)}\n"
                                     for key, value in table.items())
              for table in tables]
    return "\n".join(blocks)
