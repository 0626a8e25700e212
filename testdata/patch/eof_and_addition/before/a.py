import os

def f():
    pass

x = 1
x = 1
