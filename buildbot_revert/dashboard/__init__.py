"""A page in Buildbot's web UI: red streaks now, what the plugin decided and why.

Enabled by one line in ``master.cfg`` (with ``buildbot-wsgi-dashboards``
installed: the ``dashboard`` extra)::

    c['www']['plugins']['wsgi_dashboards'] = [util.RevertDashboard()]

The master serves it at ``/plugins/wsgi_dashboards/revert/index.html`` (a
page of its own, usable without JavaScript) and ``.../index.json`` (the
same content for other tools); the web UI lists it in its menu.  It reads
the running reporter's tracker and the plugin's records in the master's own
database: no second database, no extra server.

Layers: :mod:`.app` (the WSGI app and the ``RevertDashboard`` factory) >
:mod:`.collect` (the page's content, from the reporter and the database) >
:mod:`.model` (plain values) < :mod:`.render` (HTML through Jinja2's
autoescape, and JSON), which renders the model only.
"""
