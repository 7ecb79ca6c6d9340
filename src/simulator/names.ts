// Small built-in word lists for realistic-looking generated records.

export const FIRST_NAMES = [
  'Olivia', 'Liam', 'Emma', 'Noah', 'Ava', 'Elijah', 'Sophia', 'James', 'Isabella', 'William',
  'Mia', 'Benjamin', 'Charlotte', 'Lucas', 'Amelia', 'Henry', 'Harper', 'Alexander', 'Evelyn', 'Mason',
  'Abigail', 'Michael', 'Emily', 'Ethan', 'Elizabeth', 'Daniel', 'Sofia', 'Jacob', 'Avery', 'Logan',
  'Ella', 'Jackson', 'Scarlett', 'Levi', 'Grace', 'Sebastian', 'Chloe', 'Mateo', 'Victoria', 'Jack',
  'Riley', 'Owen', 'Aria', 'Theodore', 'Lily', 'Aiden', 'Aurora', 'Samuel', 'Zoey', 'Joseph',
  'Nora', 'John', 'Camila', 'David', 'Hannah', 'Wyatt', 'Layla', 'Matthew', 'Priya', 'Wei',
  'Fatima', 'Diego', 'Yuki', 'Omar', 'Ingrid', 'Kwame', 'Lucia', 'Rafael', 'Mei', 'Anika',
] as const;

export const LAST_NAMES = [
  'Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez',
  'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin',
  'Lee', 'Perez', 'Thompson', 'White', 'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson',
  'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Torres', 'Nguyen', 'Hill', 'Flores',
  'Green', 'Adams', 'Nelson', 'Baker', 'Hall', 'Rivera', 'Campbell', 'Mitchell', 'Carter', 'Roberts',
  'Patel', 'Kim', 'Chen', 'Okafor', 'Novak', 'Schmidt', 'Rossi', 'Silva', 'Kowalski', "O'Brien",
] as const;

export const EMAIL_DOMAINS = ['example.com', 'example.org', 'example.net'] as const;

export const AREA_CODES = ['212', '305', '312', '415', '512', '617', '702', '206', '303', '404'] as const;

export const COMPANY_NAMES = [
  'Radiance Med Spa', 'Glow Aesthetics', 'Lumen Skin Clinic', 'Serenity Laser Center', 'Bloom Dermatology',
  'Velvet Wellness', 'Aura Beauty Studio', 'Clarity Skin Lab',
] as const;

export const LOCATIONS = ['Downtown', 'Uptown', 'Riverside', 'Westfield', 'Harbor', 'Midtown', 'Lakeside', 'Old Town'] as const;

export const SERVICE_NAMES = [
  'Botox Treatment', 'Dermal Filler', 'HydraFacial', 'Chemical Peel', 'Laser Hair Removal', 'Microneedling',
  'IPL Photofacial', 'CoolSculpting', 'Lip Filler', 'Tattoo Removal', 'Consultation', 'Dermaplaning',
] as const;

export const PRODUCT_NAMES = [
  'Vitamin C Serum', 'Hyaluronic Moisturizer', 'Mineral Sunscreen SPF 50', 'Retinol Night Cream', 'Gentle Cleanser',
  'Eye Repair Cream', 'Lip Balm', 'Exfoliating Toner', 'Peptide Mask', 'Body Lotion',
] as const;

export const PROGRAM_NAMES = [
  'Glow Club', 'Botox Membership', 'Facial of the Month', 'Laser Hair Removal Plan', 'VIP Aesthetics',
  'Skin Health Essentials', 'Injectables Loyalty',
] as const;

export const EVENT_TYPE_NAMES = [
  'New Patient Consultation', 'Follow-up Visit', 'Botox Appointment', 'Filler Appointment', 'Laser Session',
  'Facial', 'Skin Check', 'Post-procedure Review',
] as const;
