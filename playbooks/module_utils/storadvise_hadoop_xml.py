# -*- coding: utf-8 -*-
# storadvise: property edits of Hadoop configuration files (hdfs-site.xml, core-site.xml).
# Licensed as storadvise itself.
"""Read and set one ``<property>`` of a Hadoop ``<configuration>`` file, keeping the rest of the text
(comments, layout, other properties) as it is: the property's ``<value>`` is rewritten in place, or a
new property is added before ``</configuration>``. The result must still parse as XML."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

_PROP = re.compile(r"<property>(?:(?!</property>).)*</property>", re.S)
_NAME = re.compile(r"<name>\s*([^<]*?)\s*</name>")
_VALUE = re.compile(r"<value>([^<]*)</value>|<value\s*/>")


def _check(text):
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError("not a Hadoop configuration file: %s" % exc)
    if root.tag != "configuration":
        raise ValueError("not a Hadoop configuration file: the root element is <%s>" % root.tag)


def _props(text):
    """(match, name) of every property outside comments."""
    out = []
    for m in _PROP.finditer(text):
        before = text[:m.start()]
        if before.rfind("<!--") > before.rfind("-->"):
            continue
        n = _NAME.search(m.group(0))
        if n:
            out.append((m, n.group(1)))
    return out


def read_property(text, name):
    """The value of the last property ``name`` (the last one wins in Hadoop), or None."""
    _check(text)
    hits = [m for m, n in _props(text) if n == name]
    if not hits:
        return None
    v = _VALUE.search(hits[-1].group(0))
    return None if v is None else (v.group(1) or "").strip()


def set_property(text, name, value):
    _check(text)
    hits = [m for m, n in _props(text) if n == name]
    if hits:
        m = hits[-1]
        block = m.group(0)
        v = _VALUE.search(block)
        if v is not None:
            block = block[:v.start()] + "<value>%s</value>" % value + block[v.end():]
        else:
            block = block.replace("</name>", "</name>\n    <value>%s</value>" % value, 1)
        new = text[:m.start()] + block + text[m.end():]
    else:
        end = text.rfind("</configuration>")
        if end < 0:
            raise ValueError("no </configuration> to add %s before" % name)
        prop = "  <property>\n    <name>%s</name>\n    <value>%s</value>\n  </property>\n" % (name, value)
        new = text[:end] + prop + text[end:]
    _check(new)
    return new


def refusal(name, value):
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", str(name)):
        return "%r is not a Hadoop property name" % (name,)
    if not re.fullmatch(r"[A-Za-z0-9_.:/-]+", str(value)):
        return "value %r is not a plain Hadoop value" % (value,)
    return None
