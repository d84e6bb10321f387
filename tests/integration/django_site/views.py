"""Views of the test Django site.

Every page renders the base template, which greets a logged-in user by name
(so the page depends on the session, and Django sends ``Vary: Cookie``).
``/contact/`` embeds a CSRF token; ``/account/`` needs a login.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "page.html", {"title": "Home"})


def article(request: HttpRequest, number: int) -> HttpResponse:
    return render(request, "page.html", {"title": f"Article {number}"})


def contact(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        messages.success(request, f"Thanks for your message: {request.POST.get('message', '')}")
        return redirect("/")
    return render(request, "contact.html", {"title": "Contact"})


@login_required
def account(request: HttpRequest) -> HttpResponse:
    return render(request, "page.html", {"title": f"Account of {request.user.get_username()}"})
