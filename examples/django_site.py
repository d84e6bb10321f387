"""A one-file Django site (ASGI) behind an embedded Stoker.

    uvicorn examples.django_site:application

Views are cached by ``@stoker.page``; the async ``edit`` view purges through
``stoker.purge``; the admin side is at ``/stoker``.  Django's ASGI handler takes no
lifespan events: the store opens at the first request (and closes with the process).
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from stoker import Stoker

if not settings.configured:
    settings.configure(ROOT_URLCONF=__name__, ALLOWED_HOSTS=["*"], DEBUG=False,
                       SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "example-not-secret"),
                       MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
                       INSTALLED_APPS=[])

stoker = Stoker(data_dir=os.environ.get("STOKER_DATA_DIR", ".stoker"),
                site_url=os.environ.get("STOKER_SITE_URL", "http://127.0.0.1:8000"),
                admin_token=os.environ.get("STOKER_ADMIN_TOKEN"), warm=True)
POSTS = {"hello": "Hello, world.", "second": "A second post."}


@stoker.page(ttl="5m", tags=lambda slug: [f"post-{slug}"])
def post(request: HttpRequest, slug: str) -> HttpResponse:
    return HttpResponse(f"<h1>{slug}</h1><p>{POSTS.get(slug, '')}</p>",
                        status=200 if slug in POSTS else 404)


def sitemap(request: HttpRequest) -> HttpResponse:
    site = stoker.settings.site_url[0]
    urls = "".join(f"<url><loc>{site}/posts/{slug}/</loc></url>" for slug in POSTS)
    return HttpResponse(f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/'
                        f'schemas/sitemap/0.9">{urls}</urlset>', content_type="application/xml")


@csrf_exempt
async def edit(request: HttpRequest, slug: str) -> JsonResponse:
    POSTS[slug] = request.POST.get("text", "")
    result = await stoker.purge(tags=[f"post-{slug}"])
    return JsonResponse({"purged": result.purged})


urlpatterns = [path("posts/<slug:slug>/", post), path("posts/<slug:slug>/edit", edit),
               path("sitemap.xml", sitemap)]
application = stoker.asgi(get_asgi_application(), admin="/stoker")
