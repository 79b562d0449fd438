"""Running real Ironic's API service (per release) on 127.0.0.1:PORT."""

import json
import os
import sys
import tempfile
import time

from fleet import _write_ironic_conf, import_ironic_command

# --------------------------------------------------------------------------
# serve
# --------------------------------------------------------------------------

_HEADER_LOG = None


def _install_request_logger(path):
    """Log method, path, query and request headers of every API request.

    This wraps Ironic's real WSGI application object (nothing else changes),
    so that we can see what the stock CLI sends.
    """
    from ironic.api import app as ironic_app
    orig_call = ironic_app.VersionSelectorApplication.__call__

    def __call__(self, environ, start_response):
        hdrs = {k[5:].replace('_', '-').title(): v
                for k, v in environ.items() if k.startswith('HTTP_')}
        # eventlet puts 'text/plain' into CONTENT_TYPE when the request
        # has no Content-Type header.
        if environ.get('CONTENT_TYPE') not in (None, '', 'text/plain'):
            hdrs['Content-Type'] = environ['CONTENT_TYPE']
        rec = {'t': time.time(), 'method': environ.get('REQUEST_METHOD'),
               'path': environ.get('PATH_INFO'),
               'query': environ.get('QUERY_STRING', ''), 'headers': hdrs}
        status_box = {}

        def sr(status, headers, exc_info=None):
            status_box['status'] = status
            status_box['headers'] = headers
            return start_response(status, headers, exc_info) \
                if exc_info else start_response(status, headers)
        result = orig_call(self, environ, sr)
        rec['status'] = status_box.get('status')
        rec['response_headers'] = status_box.get('headers')
        with open(path, 'a') as f:
            f.write(json.dumps(rec) + '\n')
        return result
    ironic_app.VersionSelectorApplication.__call__ = __call__


def cmd_serve(a):
    logdir = a.log_dir or os.path.join(tempfile.gettempdir(),
                                       'ironic-conformance')
    os.makedirs(logdir, exist_ok=True)
    log_file = os.path.join(logdir, 'ironic-api-%d.log' % a.port)
    conf = os.path.join(logdir, 'ironic-api-%d.conf' % a.port)
    _write_ironic_conf(conf, a.db_url, a.heartbeat_timeout, port=a.port,
                       log_file=log_file,
                       hash_partition_exponent=a.hash_partition_exponent,
                       hash_ring_algorithm=a.hash_ring_algorithm,
                       workers=a.workers, debug=a.debug,
                       hash_ring_reset_interval=a.hash_ring_reset_interval,
                       conductor_options=[tuple(o.split('=', 1))
                                          for o in a.conductor_option])
    print('ironic-api: config %s, log %s, requests %s' % (
        conf, log_file, os.path.join(logdir, 'requests-%d.jsonl' % a.port)),
        flush=True)
    # the console-script package sets up eventlet monkey patching (where
    # the release uses eventlet) exactly as the real ironic-api does
    command = import_ironic_command()
    if not a.no_request_log:
        _install_request_logger(os.path.join(logdir,
                                             'requests-%d.jsonl' % a.port))
    import importlib
    api = importlib.import_module(command.__name__ + '.api')
    sys.argv = ['ironic-api', '--config-file', conf]
    return api.main()
