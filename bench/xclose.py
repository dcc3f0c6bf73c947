"""Closing a window the way a user does, on a bare X server (Xvfb, no window manager): a
WM_DELETE_WINDOW client message to every top-level window with the given title, through
libX11 with ctypes (standard library only, like the rest of the harness). GTK answers it with
the window's close request, so the app takes the same path as a click on the close button.

    python3 bench/xclose.py :99 Lifeline     (exit 0 when a window was asked to close)
"""

import ctypes
import ctypes.util
import sys

Window = ctypes.c_ulong
Atom = ctypes.c_ulong
ClientMessage = 33
NoEventMask = 0


class ClientMessageData(ctypes.Union):
    _fields_ = [("b", ctypes.c_char * 20), ("s", ctypes.c_short * 10), ("l", ctypes.c_long * 5)]


class XClientMessageEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("window", Window), ("message_type", Atom),
                ("format", ctypes.c_int), ("data", ClientMessageData)]


class XEvent(ctypes.Union):
    _fields_ = [("xclient", XClientMessageEvent), ("pad", ctypes.c_long * 24)]


def _x11():
    path = ctypes.util.find_library("X11")
    if not path:
        raise OSError("libX11 not found")
    x = ctypes.CDLL(path)
    x.XOpenDisplay.restype = ctypes.c_void_p
    x.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x.XDefaultRootWindow.restype = Window
    x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    x.XInternAtom.restype = Atom
    x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x.XQueryTree.argtypes = [ctypes.c_void_p, Window, ctypes.POINTER(Window), ctypes.POINTER(Window),
                             ctypes.POINTER(ctypes.POINTER(Window)), ctypes.POINTER(ctypes.c_uint)]
    x.XFetchName.argtypes = [ctypes.c_void_p, Window, ctypes.POINTER(ctypes.c_char_p)]
    x.XSendEvent.argtypes = [ctypes.c_void_p, Window, ctypes.c_int, ctypes.c_long, ctypes.POINTER(XEvent)]
    x.XFlush.argtypes = [ctypes.c_void_p]
    x.XCloseDisplay.argtypes = [ctypes.c_void_p]
    x.XFree.argtypes = [ctypes.c_void_p]
    return x


def _windows(x, dpy, parent):
    root, up, kids, n = Window(), Window(), ctypes.POINTER(Window)(), ctypes.c_uint()
    if not x.XQueryTree(dpy, parent, ctypes.byref(root), ctypes.byref(up), ctypes.byref(kids), ctypes.byref(n)):
        return []
    out = [kids[i] for i in range(n.value)]
    if kids:
        x.XFree(kids)
    return out


def close(display, title):
    """Asks every window titled `title` (searched two levels down: GTK's toplevels sit
    directly under the root) to close; returns how many were asked."""
    x = _x11()
    dpy = x.XOpenDisplay(display.encode())
    if not dpy:
        raise OSError(f"cannot open display {display}")
    try:
        protocols = x.XInternAtom(dpy, b"WM_PROTOCOLS", 0)
        delete = x.XInternAtom(dpy, b"WM_DELETE_WINDOW", 0)
        asked = 0
        top = _windows(x, dpy, x.XDefaultRootWindow(dpy))
        for w in top + [c for t in top for c in _windows(x, dpy, t)]:
            name = ctypes.c_char_p()
            if x.XFetchName(dpy, w, ctypes.byref(name)) and name.value == title.encode():
                ev = XEvent()
                ev.xclient.type = ClientMessage
                ev.xclient.window = w
                ev.xclient.message_type = protocols
                ev.xclient.format = 32
                ev.xclient.data.l[0] = delete
                ev.xclient.data.l[1] = 0  # CurrentTime
                x.XSendEvent(dpy, w, 0, NoEventMask, ctypes.byref(ev))
                asked += 1
        x.XFlush(dpy)
        return asked
    finally:
        x.XCloseDisplay(dpy)


if __name__ == "__main__":
    sys.exit(0 if close(sys.argv[1], sys.argv[2]) else 1)
