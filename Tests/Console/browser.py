#!/usr/bin/env python3
"""Drives the crashsym web console in headless Chromium (Selenium): signs in, opens an app's
groups, a group, a crash, resolves the group, the symbols page, the webhooks page (and adds a
webhook there), signs out, and writes a screenshot of each page.

Usage: browser.py BASE_URL NAME PASSWORD APP_ID SCREENSHOT_DIR [--width W] [--dark]
Exit status 0 when every step saw what it expected; otherwise 1 with the step that failed.
Run by Tests/SymServerTests/ConsoleBrowserTests.swift and by scripts/console-screenshots.
"""
import argparse
import os
import sys
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def browser(width, dark):
    options = Options()
    options.add_argument("--headless=new")
    options.add_argument("--no-sandbox")  # root in containers and CI
    options.add_argument("--disable-dev-shm-usage")
    options.add_argument("--disable-gpu")
    options.add_argument(f"--window-size={width},1100")
    options.add_argument("--force-prefers-reduced-motion")
    if dark:
        options.add_argument("--force-dark-mode")
        options.add_argument("--blink-settings=preferredColorScheme=0")
    for path in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.path.exists(path):
            options.binary_location = path
            break
    driver_path = "/usr/bin/chromedriver"
    service = Service(driver_path) if os.path.exists(driver_path) else Service()
    return webdriver.Chrome(service=service, options=options)


def check(condition, step):
    if not condition:
        raise AssertionError(step)


def wait_for(driver, condition, step):
    """Waits up to 15 s for `condition(driver)`: a click returns before its page has loaded."""
    try:
        WebDriverWait(driver, 15).until(condition)
    except Exception:  # noqa: BLE001 - the step names what did not happen
        raise AssertionError(f"{step} (at {driver.current_url})")


def click_and_wait(driver, element, condition, step):
    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    # The old document goes stale once the next one replaces it.
    wait_for(driver, lambda d: _stale(old), step + ": no new page")
    wait_for(driver, condition, step)


def _stale(element):
    try:
        element.tag_name
        return False
    except Exception:  # noqa: BLE001 - StaleElementReferenceException
        return True


def shot(driver, directory, name):
    # The whole page, not only the window: set the window to the document's height first.
    height = driver.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    width = driver.get_window_size()["width"]
    driver.set_window_size(width, min(max(height + 16, 400), 4000))
    driver.save_screenshot(os.path.join(directory, name + ".png"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("name")
    parser.add_argument("password")
    parser.add_argument("app")
    parser.add_argument("screenshots")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--dark", action="store_true")
    parser.add_argument("--prefix", default="console-")
    args = parser.parse_args()
    os.makedirs(args.screenshots, exist_ok=True)
    driver = browser(args.width, args.dark)
    step = "start"
    try:
        step = "an unsigned visit goes to the sign-in page"
        driver.get(args.base + "/apps")
        check("/signin" in driver.current_url, step)
        shot(driver, args.screenshots, args.prefix + "signin")

        step = "sign in"
        driver.find_element(By.ID, "name").send_keys(args.name)
        driver.find_element(By.ID, "password").send_keys(args.password)
        click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form.signin button[type=submit]"),
                       lambda d: d.current_url.endswith("/apps"), step + ": not on /apps")
        check(driver.find_element(By.TAG_NAME, "h1").text == "Apps", step + ": no Apps heading")
        shot(driver, args.screenshots, args.prefix + "apps")

        step = "open the app"
        click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, f"a[href='/apps/{args.app}']"),
                       lambda d: d.current_url.endswith(f"/apps/{args.app}"), step)
        rows = driver.find_elements(By.CSS_SELECTOR, "table.groups tbody tr")
        check(len(rows) > 0, step + ": no group rows")
        check(len(driver.find_elements(By.CSS_SELECTOR, "svg.chart rect")) > 0, step + ": the chart has no bars")
        shot(driver, args.screenshots, args.prefix + "groups")

        step = "open the first group"
        click_and_wait(driver, rows[0].find_element(By.CSS_SELECTOR, "th a"), lambda d: "/groups/" in d.current_url, step)
        group_url = driver.current_url
        check(len(driver.find_elements(By.CSS_SELECTOR, "tr.role-signature")) > 0, step + ": no signature frame explained")
        shot(driver, args.screenshots, args.prefix + "group")

        step = "open a crash"
        click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "#list ~ div a[href*='/crashes/']"),
                       lambda d: "/crashes/" in d.current_url, step)
        check(len(driver.find_elements(By.CSS_SELECTOR, "table.frames tbody tr")) > 0, step + ": no frames")
        crash_path = urllib.parse.urlparse(driver.current_url).path
        shot(driver, args.screenshots, args.prefix + "crash")

        step = "resolve the group"
        driver.get(group_url)
        click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "button[value=resolved]"),
                       lambda d: d.current_url == group_url, step + ": not back on the group")
        state = driver.find_element(By.CSS_SELECTOR, "dl.facts dd .state").text
        check(state == "resolved", step + ": state is " + state)
        check(len(driver.find_elements(By.CSS_SELECTOR, "button[value=open]")) == 1, step + ": no reopen button")

        step = "symbols page"
        driver.get(args.base + f"/apps/{args.app}/symbols")
        check(driver.find_element(By.TAG_NAME, "h1").text.endswith("symbols"), step)
        shot(driver, args.screenshots, args.prefix + "symbols")

        step = "webhooks page"
        click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, f"p.tabs a[href='/apps/{args.app}/webhooks']"),
                       lambda d: d.current_url.endswith(f"/apps/{args.app}/webhooks"), step)
        hooks = len(driver.find_elements(By.CSS_SELECTOR, "section.hook"))
        check(hooks >= 1, step + ": no webhook listed")
        check(len(driver.find_elements(By.CSS_SELECTOR, "table.deliveries tbody tr")) > 0, step + ": no deliveries")
        step = "add a webhook"
        driver.find_element(By.ID, "url").send_keys("http://127.0.0.1:9/team-chat")
        driver.find_element(By.CSS_SELECTOR, "input[name=events][value='group.regression']").click()
        driver.find_element(By.CSS_SELECTOR, "#format option[value=slack]").click()
        driver.find_element(By.ID, "secret").send_keys("a secret")
        click_and_wait(driver, driver.find_element(By.XPATH, "//button[text()='Add webhook']"),
                       lambda d: len(d.find_elements(By.CSS_SELECTOR, "section.hook")) == hooks + 1, step + ": not listed")
        check("http://127.0.0.1:9/team-chat" in driver.page_source, step + ": URL not shown")
        shot(driver, args.screenshots, args.prefix + "webhooks")

        step = "a phone in the dark theme"
        crash_url = args.base + crash_path
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        driver.set_window_size(390, 844)
        driver.get(args.base + f"/apps/{args.app}")
        background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
        check(background == "rgb(13, 17, 23)", step + ": background " + background)
        shot(driver, args.screenshots, args.prefix + "phone-dark-groups")
        driver.set_window_size(390, 844)
        driver.get(crash_url)
        shot(driver, args.screenshots, args.prefix + "phone-dark-crash")
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        driver.set_window_size(args.width, 1100)

        step = "sign out"
        click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "header form button"),
                       lambda d: "/signin" in d.current_url, step + ": not on the sign-in page")
        driver.get(args.base + "/apps")
        check("/signin" in driver.current_url, step + ": the session still works")
        print("browser: every step passed")
        return 0
    except Exception as error:  # noqa: BLE001 - report the step, whatever failed
        print(f"browser: step '{step}' failed: {error}", file=sys.stderr)
        try:
            driver.save_screenshot(os.path.join(args.screenshots, args.prefix + "failure.png"))
        except Exception:  # noqa: BLE001
            pass
        return 1
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
