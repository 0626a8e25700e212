import os
import sys

def f():
    pass

x = 1
x = 2
