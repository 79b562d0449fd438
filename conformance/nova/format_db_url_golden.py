#!/usr/bin/python3
"""Golden values of nova/testdata/format_db_url.json: Nova's own
CellMapping._format_url (as format_db_url uses it: the template unformatted
when it raises), run inside a chroot of conformance/nova/chroots.sh:
  chroot DIR /usr/bin/python3 /tmp/format_db_url_golden.py > nova/testdata/format_db_url.json
"""
import json
from nova.objects.cell_mapping import CellMapping
T = ["{scheme}://{username}:{password}@{hostname}:{port}/{path}?{query}#{fragment}",
     "{scheme}://{username}@{hostname}/nova_cell1", "mysql+pymysql://{username}:{password}@{hostname}/cell2?{query}",
     "{{literal}}{scheme}", "{unknown}", "x}y", "{hostname1}:{port1},{hostname2}:{port2}/{username2}:{password2}", "plain", "{scheme"]
C = ["postgresql+psycopg2://postgres@127.0.0.1:5432/nova?sslmode=disable",
     "mysql+pymysql://Nova:p%40ss@DB.Example.COM:3306/nova?charset=utf8#frag",
     "mysql+pymysql://nova@db:notaport/nova", "sqlite:////var/lib/nova/nova.sqlite", "mysql://a:b@h1:1,c@H2:02/x",
     "postgresql://[fd00::1]:5433/n", "postgresql://u@/n", "mysql+pymysql://u:@h:/n"]
out = []
for t in T:
    for c in C:
        try:
            r = CellMapping._format_url(t, c)
        except Exception:
            r = t
        out.append([t, c, r])
print(json.dumps(out, ensure_ascii=False))
