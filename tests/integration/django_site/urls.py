"""URLs of the test Django site."""

from django.contrib.auth.views import LoginView
from django.urls import path

from . import views

urlpatterns = [
    path("", views.home),
    path("articles/<int:number>/", views.article),
    path("contact/", views.contact),
    path("accounts/login/", LoginView.as_view()),
    path("account/", views.account),
]
