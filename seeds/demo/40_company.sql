-- A small company database the schema feature exposes: a shop (customers, products, orders) and
-- its support desk, over three schemas, with comments, foreign keys, an enum and a view.
create schema if not exists shop;
create schema if not exists support;
create schema if not exists finance;
comment on schema shop is 'Online shop: customers, catalogue and orders.';
comment on schema support is 'Customer support desk.';
comment on schema finance is 'Invoices and payments.';

do $$ begin
  create type shop.order_status as enum ('pending', 'paid', 'shipped', 'delivered', 'cancelled');
exception when duplicate_object then null; end $$;

create table if not exists shop.customers (
  id bigint generated always as identity primary key,
  email text not null unique,
  full_name text not null,
  country char(2) not null,
  created_at timestamptz not null default now()
);
comment on table shop.customers is 'People and companies who buy from the shop.';
comment on column shop.customers.country is 'ISO 3166-1 alpha-2 country code.';

create table if not exists shop.products (
  id bigint generated always as identity primary key,
  sku text not null unique,
  name text not null,
  price_cents integer not null check (price_cents >= 0),
  active boolean not null default true
);
comment on table shop.products is 'The catalogue. Prices are in euro cents.';

create table if not exists shop.orders (
  id bigint generated always as identity primary key,
  customer_id bigint not null references shop.customers (id),
  status shop.order_status not null default 'pending',
  placed_at timestamptz not null default now()
);
comment on table shop.orders is 'One row per checkout.';
create index if not exists orders_customer_id_idx on shop.orders (customer_id);

create table if not exists shop.order_items (
  order_id bigint not null references shop.orders (id) on delete cascade,
  line_no integer not null,
  product_id bigint not null references shop.products (id),
  quantity integer not null check (quantity > 0),
  unit_price_cents integer not null,
  primary key (order_id, line_no)
);
comment on table shop.order_items is 'Order lines; the price is copied from the product when ordered.';

create table if not exists support.tickets (
  id bigint generated always as identity primary key,
  customer_id bigint not null references shop.customers (id),
  order_id bigint references shop.orders (id),
  subject text not null,
  status text not null default 'open' check (status in ('open', 'waiting', 'solved')),
  opened_at timestamptz not null default now()
);
comment on table support.tickets is 'Support requests from customers, optionally about an order.';

create table if not exists support.ticket_comments (
  id bigint generated always as identity primary key,
  ticket_id bigint not null references support.tickets (id) on delete cascade,
  author text not null,
  body text not null,
  created_at timestamptz not null default now()
);
comment on table support.ticket_comments is 'The conversation on a ticket.';

create table if not exists finance.invoices (
  id bigint generated always as identity primary key,
  order_id bigint not null unique references shop.orders (id),
  amount_cents integer not null,
  issued_at timestamptz not null default now(),
  paid_at timestamptz
);
comment on table finance.invoices is 'One invoice per paid order.';

create or replace view finance.revenue_by_month as
  select date_trunc('month', issued_at) as month, sum(amount_cents) as revenue_cents, count(*) as invoices
  from finance.invoices group by 1;
comment on view finance.revenue_by_month is 'Invoiced revenue per calendar month.';

-- Deterministic rows, only on the first load.
insert into shop.customers (email, full_name, country, created_at)
select format('customer%s@example.com', g),
       (array['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken'])[1 + g % 8] || ' ' ||
       (array['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Thompson'])[1 + (g / 8) % 8],
       (array['DE', 'FR', 'NL', 'US', 'GB', 'ES', 'IT', 'SE'])[1 + g % 8],
       timestamptz '2026-01-01' + g * interval '7 hours'
from generate_series(1, 200) as g
where not exists (select 1 from shop.customers);

insert into shop.products (sku, name, price_cents)
select format('SKU-%s', lpad(g::text, 4, '0')),
       (array['Mug', 'T-shirt', 'Sticker pack', 'Notebook', 'Hoodie', 'Cap', 'Poster', 'Pen'])[1 + g % 8] || ' ' || g,
       500 + (g * 137) % 5000
from generate_series(1, 40) as g
where not exists (select 1 from shop.products);

insert into shop.orders (customer_id, status, placed_at)
select 1 + (g * 7) % 200,
       (array['pending', 'paid', 'shipped', 'delivered', 'cancelled'])[1 + g % 5]::shop.order_status,
       timestamptz '2026-02-01' + g * interval '5 hours'
from generate_series(1, 500) as g
where not exists (select 1 from shop.orders);

insert into shop.order_items (order_id, line_no, product_id, quantity, unit_price_cents)
select o.id, l, p.id, 1 + (o.id + l) % 3, p.price_cents
from shop.orders o
cross join generate_series(1, 3) as l
join shop.products p on p.id = 1 + (o.id * 3 + l) % 40
where l <= 1 + o.id % 3
on conflict do nothing;

insert into support.tickets (customer_id, order_id, subject, status, opened_at)
select 1 + (g * 11) % 200, case when g % 3 = 0 then null else 1 + (g * 13) % 500 end,
       (array['Where is my order?', 'Refund request', 'Wrong size', 'Invoice address change', 'Damaged item'])[1 + g % 5],
       (array['open', 'waiting', 'solved'])[1 + g % 3],
       timestamptz '2026-03-01' + g * interval '9 hours'
from generate_series(1, 120) as g
where not exists (select 1 from support.tickets);

insert into support.ticket_comments (ticket_id, author, body, created_at)
select t.id, case when c = 1 then 'customer' else 'agent' end,
       case when c = 1 then 'Hello, ' || lower(t.subject) else 'Thanks, we are looking into it.' end,
       t.opened_at + c * interval '1 hour'
from support.tickets t cross join generate_series(1, 2) as c
where not exists (select 1 from support.ticket_comments);

insert into finance.invoices (order_id, amount_cents, issued_at, paid_at)
select o.id, sum(i.quantity * i.unit_price_cents), o.placed_at + interval '1 hour',
       case when o.status in ('shipped', 'delivered') then o.placed_at + interval '2 days' end
from shop.orders o join shop.order_items i on i.order_id = o.id
where o.status <> 'pending' and o.status <> 'cancelled'
group by o.id
on conflict (order_id) do nothing;
